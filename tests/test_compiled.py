"""The drainer's compiled hot path (setup.py) gives exactly what its Python source gives.

dlq/broker/_wire.pyx is a second decoder, checked here against codec.decode_table, the
reference, on the golden corpus, random tables, truncated and random bytes.
dlq/messages/deaths.py and dlq/messages/ingest.py are compiled as they are; the golden test
runs the compiled build, and here the same corpus runs through the sources alone, in a copy
of the package with no builds.
"""

import base64
import json
import os
import shutil
import struct
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq import compiled
from dlq.broker import _wire, amqp, codec
from dlq.broker.properties import FIELDS, SHORT_STRING_PROPERTIES, decode_properties
from tests import ROOT
from tests.ingestcases import HEADERS

pytestmark = pytest.mark.slow  # builds and installs the package in fresh virtualenvs


def test_the_hot_modules_are_compiled_and_current():
    assert set(compiled.built()) == set(compiled.SOURCES), (
        "build them with `make setup` (needs a C compiler)"
    )
    compiled.check()
    assert codec.decoder() == "compiled"


def _outcome(decode, buf: bytes):
    """The decoded table as its repr (True is not 1 here, nor 1.0), or the error's type."""
    try:
        return repr(decode(buf, 0))
    except (IndexError, struct.error, codec.UnknownFieldType) as e:
        return type(e)


def test_the_compiled_decoder_reads_the_golden_corpus_as_the_reference_does():
    for headers in HEADERS:
        wire = codec.encode_table(headers)
        assert repr(_wire.decode_table(wire, 0)) == repr(codec.decode_table(wire, 0))


def test_the_compiled_decoder_fails_where_the_reference_fails():
    """Every cut of every corpus table: the same table, or the same kind of error."""
    for headers in HEADERS:
        wire = codec.encode_table(headers)
        for cut in range(len(wire)):
            assert _outcome(_wire.decode_table, wire[:cut]) == _outcome(
                codec.decode_table, wire[:cut]
            ), (headers, cut)


_scalars = st.one_of(
    st.builds(lambda v: {"type": "longstr", "value": v}, st.text()),
    st.builds(lambda v: {"type": "bytes", "base64": base64.b64encode(v).decode()}, st.binary()),
    st.builds(lambda v: {"type": "bool", "value": v}, st.booleans()),
    st.builds(lambda v: {"type": "int8", "value": v}, st.integers(-(2**7), 2**7 - 1)),
    st.builds(lambda v: {"type": "uint8", "value": v}, st.integers(0, 2**8 - 1)),
    st.builds(lambda v: {"type": "int16", "value": v}, st.integers(-(2**15), 2**15 - 1)),
    st.builds(lambda v: {"type": "uint16", "value": v}, st.integers(0, 2**16 - 1)),
    st.builds(lambda v: {"type": "int32", "value": v}, st.integers(-(2**31), 2**31 - 1)),
    st.builds(lambda v: {"type": "uint32", "value": v}, st.integers(0, 2**32 - 1)),
    st.builds(lambda v: {"type": "int64", "value": v}, st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda v: {"type": "timestamp", "value": v}, st.integers(0, 2**64 - 1)),
    st.builds(lambda v: {"type": "double", "value": v}, st.floats(allow_nan=False)),
    st.builds(lambda v: {"type": "float", "value": v}, st.floats(width=32, allow_nan=False)),
    st.builds(lambda v: {"type": "decimal", "value": v}, st.sampled_from(["1.5", "-0.001", "7"])),
    st.just({"type": "void", "value": None}),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.builds(lambda v: {"type": "array", "value": v}, st.lists(inner, max_size=4)),
        st.builds(
            lambda v: {"type": "table", "value": v},
            st.dictionaries(st.text(max_size=8), inner, max_size=4),
        ),
    ),
    max_leaves=20,
)
_tables = st.dictionaries(st.text(max_size=12), _values, max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tables)
def test_the_compiled_decoder_reads_any_table_as_the_reference_does(headers):
    try:
        wire = codec.encode_table(headers)
    except codec.AmqpValueError:
        return  # not sendable (an infinite float): nothing to decode
    assert repr(_wire.decode_table(wire, 0)) == repr(codec.decode_table(wire, 0))


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_the_compiled_decoder_reads_any_bytes_as_the_reference_does(noise):
    buf = struct.pack(">I", len(noise)) + noise
    assert _outcome(_wire.decode_table, buf) == _outcome(codec.decode_table, buf)


_short = st.one_of(
    st.text(max_size=20),
    st.builds(lambda raw: {"base64": base64.b64encode(raw).decode()}, st.binary(max_size=20)),
)
_properties = st.fixed_dictionaries(
    {},
    optional={
        **dict.fromkeys(SHORT_STRING_PROPERTIES, _short),
        "delivery_mode": st.integers(0, 255),
        "priority": st.integers(0, 255),
        "timestamp": st.integers(0, 2**64 - 1),
    },
)


def _decoded(properties_wire: bytes, compiled_too: bool):
    """The attributes a decode sets, or the error's type."""
    props = amqp.TypedProperties()
    try:
        if compiled_too:
            _wire.decode_properties(props, properties_wire, 0, FIELDS)
        else:
            decode_properties(props, properties_wire, 0)
    except (IndexError, struct.error, codec.UnknownFieldType) as e:
        return type(e)
    return repr(vars(props))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_properties, st.one_of(st.none(), _tables))
def test_the_compiled_properties_decoder_reads_what_the_reference_reads(properties, headers):
    try:
        wire = b"".join(amqp.make_properties(properties, headers).encode())
    except codec.AmqpValueError:
        return  # not sendable (a short string over 255 bytes, an infinite float)
    assert _decoded(wire, True) == _decoded(wire, False)
    for cut in range(0, len(wire), 7):
        assert _decoded(wire[:cut], True) == _decoded(wire[:cut], False), cut


def test_a_compiled_module_older_than_its_source_refuses_to_load(tmp_path, monkeypatch):
    (tmp_path / "messages").mkdir()
    for name in ("compiled.py", "messages/deaths.py", "_compiled.json"):
        shutil.copy(ROOT / "dlq" / name, tmp_path / name)
    messages = ROOT / "dlq" / "messages"
    so = next(p for p in messages.iterdir() if p.name.startswith("deaths.cpython"))
    shutil.copy(so, tmp_path / "messages" / so.name)
    monkeypatch.setattr(compiled, "HERE", tmp_path)
    monkeypatch.setattr(compiled, "MANIFEST", tmp_path / "_compiled.json")
    monkeypatch.setattr(compiled, "SOURCES", {"dlq.messages.deaths": "messages/deaths.py"})
    compiled.check()  # as built
    with (tmp_path / "messages" / "deaths.py").open("a") as f:
        f.write("# edited after the build\n")
    with pytest.raises(
        compiled.StaleBuild, match="dlq.messages.deaths changed since it was compiled"
    ):
        compiled.check()


def test_the_sources_alone_store_the_golden_rows(tmp_path):
    """Where no C compiler built them, the same code runs as Python: same rows."""
    shutil.copytree(
        ROOT / "dlq",
        tmp_path / "dlq",
        ignore=shutil.ignore_patterns("*.so", "*.c", "_compiled.json", "__pycache__"),
    )
    (tmp_path / "tests" / "messages").mkdir(parents=True)
    copied = ("__init__.py", "ingestcases.py", "typedvalues.py", "messages/__init__.py")
    for name in (*copied, "messages/test_ingest_golden.py"):
        shutil.copy(ROOT / "tests" / name, tmp_path / "tests" / name)
    shutil.copytree(ROOT / "tests" / "golden", tmp_path / "tests" / "golden")
    script = (
        "import sys\n"  # the editable install's finder would find the builds in the checkout
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]\n"
        "from dlq import compiled\n"
        "from dlq.broker import codec\n"
        "from dlq.messages import deaths, ingest\n"
        "assert compiled.built() == [] and codec.decoder() == 'Python', compiled.built()\n"
        "assert ingest.__file__.endswith('.py') and deaths.__file__.endswith('.py')\n"
        "from tests.messages import test_ingest_golden as t\n"
        "for name in dir(t):\n"
        "    if name.startswith('test_'):\n"
        "        getattr(t, name)()\n"
        "print('golden rows: the same')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "golden rows: the same" in done.stdout


def test_without_a_c_compiler_the_install_goes_on_and_the_sources_run(tmp_path):
    """An install where nothing compiles: it succeeds, an old build left in the checkout is
    removed rather than run, and the package imports as Python."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    checkout = tmp_path / "checkout"
    for name in tracked:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, checkout / name)
    for old in (ROOT / "dlq").glob("**/*.so"):  # an earlier build, of older sources
        shutil.copy(old, checkout / old.relative_to(ROOT))
    shutil.copy(ROOT / "dlq" / "_compiled.json", checkout / "dlq" / "_compiled.json")
    with (checkout / "dlq" / "messages" / "ingest.py").open("a") as f:
        f.write("# edited since that build\n")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run(
        [venv / "bin" / "pip", "install", "-q", "--no-deps", "-e", "."],
        cwd=checkout,
        env={**os.environ, "CC": "/bin/false"},  # a compiler that always fails
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert list((checkout / "dlq").glob("**/*.so")) == []
    assert json.loads((checkout / "dlq" / "_compiled.json").read_text()) == {}
    described = subprocess.run(
        [venv / "bin" / "python", "-c", "from dlq import compiled; print(compiled.describe())"],
        cwd=checkout,
        capture_output=True,
        text=True,
    )
    assert described.stdout.strip() == "none (pure Python)", described.stderr
