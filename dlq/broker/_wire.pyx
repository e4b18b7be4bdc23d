# cython: language_level=3, boundscheck=True, wraparound=False
"""amqp.decode_table, compiled: the drainer decodes every message's headers with it.

dlq/broker/codec.py holds the reference in Python and uses this one when it is built (`make setup`,
or `pip install .` where a C compiler is at hand). Same values, same types, same errors on
a truncated table (tests/test_compiled.py compares them). The common value types are read
here; the rare scalar ones are handed back to the reference (`_other`).
"""

import base64
import struct

cdef object _other = None  # amqp.decode_value, for the rare scalar types
cdef int _max_nesting = 64


def use(other, int max_nesting):
    """Set by dlq/broker/codec.py: its decode_value, and its nesting limit."""
    global _other, _max_nesting
    _other, _max_nesting = other, max_nesting


cdef unsigned long long _unsigned(const unsigned char[:] v, Py_ssize_t off, int size) except? 0:
    if off + size > v.shape[0]:
        raise struct.error(f"unpack_from requires a buffer of at least {off + size} bytes")
    cdef unsigned long long value = 0
    cdef int i
    for i in range(size):
        value = (value << 8) | v[off + i]
    return value


cdef dict _longstr(bytes raw):
    try:
        return {"type": "longstr", "value": raw.decode()}
    except UnicodeDecodeError:
        return {"type": "longstr", "base64": base64.b64encode(raw).decode()}


cdef tuple _value(bytes buf, const unsigned char[:] v, Py_ssize_t off, int depth):
    cdef unsigned char kind = v[off]
    cdef Py_ssize_t n, end
    cdef unsigned long long raw
    cdef list items
    if kind == 0x53:  # S long string
        n = <Py_ssize_t>_unsigned(v, off + 1, 4)
        end = off + 5 + n
        return _longstr(buf[off + 5 : end]), end
    if kind == 0x46 or kind == 0x41:  # F table, A array
        n = <Py_ssize_t>_unsigned(v, off + 1, 4)
        end = off + 5 + n
        if depth >= _max_nesting:
            raw_text = base64.b64encode(buf[off + 5 : end]).decode()
            return {"type": "table" if kind == 0x46 else "array", "base64": raw_text}, end
        if kind == 0x46:
            table, end = _table(buf, v, off + 1, depth + 1)
            return {"type": "table", "value": table}, end
        items = []
        off += 5
        while off < end:
            item, off = _value(buf, v, off, depth + 1)
            items.append(item)
        return {"type": "array", "value": items}, off
    if kind == 0x49:  # I int32
        raw = _unsigned(v, off + 1, 4)
        return {"type": "int32", "value": <int>(<unsigned int>raw)}, off + 5
    if kind == 0x6C:  # l int64
        raw = _unsigned(v, off + 1, 8)
        return {"type": "int64", "value": <long long>raw}, off + 9
    if kind == 0x54:  # T timestamp
        return {"type": "timestamp", "value": _unsigned(v, off + 1, 8)}, off + 9
    if kind == 0x74:  # t bool
        return {"type": "bool", "value": v[off + 1] != 0}, off + 2
    return _other(buf, off, depth)


cdef tuple _table(bytes buf, const unsigned char[:] v, Py_ssize_t off, int depth):
    cdef Py_ssize_t end = off + 4 + <Py_ssize_t>_unsigned(v, off, 4)
    cdef Py_ssize_t klen
    cdef dict table = {}
    off += 4
    while off < end:
        klen = v[off]
        key = buf[off + 1 : off + 1 + klen].decode("utf-8", "surrogateescape")
        table[key], off = _value(buf, v, off + 1 + klen, depth)
    return table, off


def decode_table(bytes buf not None, Py_ssize_t off, int depth=0):
    """amqp.decode_table: (the typed table at off, the offset after it)."""
    if off < 0:
        raise IndexError("negative offset")
    return _table(buf, buf, off, depth)


def decode_properties(props, bytes encoded not None, Py_ssize_t offset, fields):
    """amqp.TypedProperties.decode: props' attributes from the content header's property
    list; `fields` is amqp._FIELDS, (name, kind, flag bit) in wire order."""
    cdef const unsigned char[:] v = encoded
    cdef Py_ssize_t n
    flags, shift = 0, 0  # Python ints: a hostile header may chain many flag words
    while True:
        partial = _unsigned(v, offset, 2)
        offset += 2
        flags |= partial << shift
        shift += 16
        if not partial & 1:
            break
    for name, kind, bit in fields:
        if not flags & (1 << bit):
            continue
        if kind == "s":
            n = v[offset]
            raw = encoded[offset + 1 : offset + 1 + n]
            offset += 1 + n
            try:
                value = raw.decode()
            except UnicodeDecodeError:
                value = {"base64": base64.b64encode(raw).decode()}
        elif kind == "F":
            value, offset = _table(encoded, v, offset, 0)
        elif kind == "B":
            value = v[offset]
            offset += 1
        else:
            value = _unsigned(v, offset, 8)
            offset += 8
        setattr(props, name, value)
    return props
