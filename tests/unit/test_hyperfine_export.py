"""A hyperfine --export-json file as `ingest` reads it: what an exit code it cannot be is taken as."""

from __future__ import annotations

import json

from boardlab.campaign.hyperfine import read_results


def test_an_exit_code_no_process_has_is_not_known(tmp_path):
    # before: 10**22 reached the store's 64-bit column, and ingest ended in an internal error
    export = tmp_path / "hf.json"
    codes = [0, 1, None, "a", True, 10**22, -(2**31)]
    export.write_text(
        json.dumps({"results": [{"command": "x", "times": [0.1] * len(codes), "exit_codes": codes}]})
    )
    assert read_results(export)[0].exit_codes == (0, 1, None, None, None, None, -(2**31))
