"""Energy and power: declared power sources, a sampler off the measured CPU, and per-run energy.

- `sources`: what can be measured here (hwmon INA2xx/INA3221, powercap RAPL, the Raspberry Pi 5 PMIC, an
  external meter command, a UM24C/UM25C-class serial meter), each declaring kind, scope, unit, update
  interval, resolution and whether it is measured or estimated;
- `sampler`: one thread, each source read at its own update interval, samples kept with CLOCK_MONOTONIC;
- `integrate`: counter deltas across wraps, trapezoids clipped to a run's exact start and end, the
  quantization bound, and the warnings (short runs, aliasing);
- `efficiency`: idle power from the idle windows, dynamic energy, J/op, nJ/bit, GFLOPS/W, EDP and ED^2P,
  with bootstrap CIs over runs;
- `um25c`: the UM24C/UM25C record format.
"""
