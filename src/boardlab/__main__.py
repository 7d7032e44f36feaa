from boardlab.cli import main

raise SystemExit(main())
