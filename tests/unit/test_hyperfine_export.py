"""A hyperfine --export-json file as `ingest` reads it: what an exit code it cannot be is taken as."""

from __future__ import annotations

import json

import pytest

from boardlab.campaign.hyperfine import read_results, write_campaign_file
from boardlab.errors import InputError


def test_an_exit_code_no_process_has_is_not_known(tmp_path):
    # before: 10**22 reached the store's 64-bit column, and ingest ended in an internal error
    export = tmp_path / "hf.json"
    codes = [0, 1, None, "a", True, 10**22, -(2**31)]
    export.write_text(
        json.dumps({"results": [{"command": "x", "times": [0.1] * len(codes), "exit_codes": codes}]})
    )
    assert read_results(export)[0].exit_codes == (0, 1, None, None, None, None, -(2**31))


def test_a_command_the_import_cannot_keep_is_named_by_its_place_in_the_export(tmp_path):
    """The import keeps each command as a program's words, through a plan it generates: a refusal names the
    export's result, not a line of that plan (before: `hyperfine:hf.json:16: workloads[0].command`)."""
    export = tmp_path / "hf.json"
    results = [{"command": c, "times": [0.1, 0.1], "exit_codes": [0, 0]} for c in ("true", "echo 'a")]
    export.write_text(json.dumps({"results": results}))
    dest = tmp_path / "hf.db"
    with pytest.raises(InputError) as err:
        write_campaign_file(export, dest)
    assert str(err.value).startswith(f'{export}: results[1].command: "echo \'a" cannot be split into words')
    assert "hyperfine:" not in str(err.value) and not dest.exists()
