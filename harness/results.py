"""Results files read as untrusted data: compare.csv, paper_settings.json,
zoology.json, probe.json, a training log are things someone may have sent
you. Each reader states a small schema of its own with the kinds below (the
types, the ranges, the columns, which rows may not repeat); anything else,
a file that is not JSON or CSV, a directory or a FIFO where the file should
be, is refused with one line and exit 2 (common.die), never a traceback.

A schema is built of fields: Int, Num, Text, Name, Obj, ListOf, MapOf. Each
checks a JSON value (field.json) or a CSV cell (field.text) and returns the
value to use, or raises Invalid saying what is wrong; load_json and load_csv
add where (the file, the row, the field) and die."""
import csv
import io
import json
import math
import re

from harness import registry
from harness.base import die
from harness.files import read_input

MAX_BYTES = 256 << 20  # a results file is kilobytes; this stops a planted huge one before it is read
MAX_INT = 1 << 63      # what bin/train's counters hold
NAME_CHARS = re.compile(r"[A-Za-z0-9._-]+")


class Invalid(ValueError):
    """What is wrong with a value; the reader says where."""


def shown(value, limit=40):
    """A value as an error line shows it: repr (control characters escaped), cut at `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def name_problem(name):
    """Why `name` cannot name an architecture or a run (it becomes part of file names under --out and
    of the plots' scripts), or None: only [A-Za-z0-9._-], not empty, no '..'. A list of mixers joined by
    commas (an architecture given without NAME=) is its own name."""
    if not isinstance(name, str) or not name:
        return "is empty"
    if all(m in registry.names() for m in name.split(",")):
        return None
    if not NAME_CHARS.fullmatch(name):
        return "may hold only letters, digits, '.', '_' and '-'"
    if ".." in name:
        return "may not hold '..'"
    return None


class Field:
    """One value of a schema; optional: it may be null, an empty cell, or missing."""

    def __init__(self, optional=False):
        self.optional = optional

    def json(self, value):
        if value is None:
            if self.optional:
                return None
            raise Invalid("is missing or null")
        return self.check(value)

    def text(self, cell):
        if cell is None or cell == "":
            if self.optional:
                return None
            raise Invalid("is empty")
        return self.check(self.parse(cell))

    def parse(self, cell):
        return cell

    def check(self, value):
        return value


class Int(Field):
    """An integer in [lo, hi] (JSON: a number without a fraction, not true/false)."""

    def __init__(self, lo=None, hi=MAX_INT, optional=False):
        super().__init__(optional)
        self.lo, self.hi = lo, hi

    def parse(self, cell):
        if not re.fullmatch(r"[+-]?[0-9]{1,19}", cell):
            raise Invalid(f"must be an integer (got {shown(cell)})")
        return int(cell)

    def check(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(f"must be an integer (got {shown(value)})")
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            raise Invalid(f"must be in [{self.lo if self.lo is not None else '-inf'}, {self.hi}] (got {value})")
        return value


class Num(Field):
    """A number, finite unless finite=False, at least `lo` (or above it with lo_open), at most `hi`.
    nan_is_none: a NaN (a CSV 'nan') reads as missing, as bin/train's log writes a value it has not."""

    def __init__(self, lo=None, hi=None, lo_open=False, finite=True, nan_is_none=False, optional=False):
        super().__init__(optional or nan_is_none)
        self.lo, self.hi, self.lo_open, self.finite, self.nan_is_none = lo, hi, lo_open, finite, nan_is_none

    def text(self, cell):
        if self.nan_is_none and cell is not None and cell.strip().lower() == "nan":
            return None
        return super().text(cell)

    def parse(self, cell):
        # float() strips less than str.strip() does (not '\x1c'): convert what was matched.
        number = cell.strip()
        if not re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?inf", number, re.I):
            raise Invalid(f"must be a number (got {shown(cell)})")
        return float(number)

    def check(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(f"must be a number (got {shown(value)})")
        value = float(value)  # an integer past a double's range becomes inf, refused below where finite
        if math.isnan(value):
            if self.nan_is_none:
                return None
            raise Invalid("must be a number (got NaN)")
        if self.finite and math.isinf(value):
            raise Invalid(f"must be finite (got {value})")
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            raise Invalid(f"must be {'above' if self.lo_open else 'at least'} {self.lo:g} (got {value:g})")
        if self.hi is not None and value > self.hi:
            raise Invalid(f"must be at most {self.hi:g} (got {value:g})")
        return value


class Text(Field):
    """A string matching `pattern` (whole), or one of `choices`, at most max_len characters."""

    def __init__(self, pattern=None, choices=None, max_len=200, optional=False):
        super().__init__(optional)
        self.pattern, self.choices, self.max_len = pattern, choices, max_len

    def check(self, value):
        if not isinstance(value, str):
            raise Invalid(f"must be a string (got {shown(value)})")
        if len(value) > self.max_len:
            raise Invalid(f"is longer than {self.max_len} characters")
        if self.choices is not None and value not in self.choices:
            raise Invalid(f"must be one of {', '.join(self.choices)} (got {shown(value)})")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise Invalid(f"is not of the form {self.pattern} (got {shown(value)})")
        return value


class Name(Text):
    """An architecture's or a run's name (name_problem)."""

    def check(self, value):
        value = super().check(value)
        why = name_problem(value)
        if why:
            raise Invalid(f"{shown(value)} {why}")
        return value


class Mixers(Text):
    """A comma list of registered mixers, one per layer (compare.csv's "mixers")."""

    def __init__(self, optional=False):
        super().__init__(r"[a-z0-9_]+(,[a-z0-9_]+)*", max_len=4000, optional=optional)

    def check(self, value):
        value = super().check(value)
        unknown = [m for m in value.split(",") if m not in registry.names()]
        if unknown:
            raise Invalid(f"names {shown(unknown[0])}, which is not a registered mixer (bin/info --mixers)")
        return value


class OptionText(Text):
    """A mixer's text option's value (registry), as bin/train takes it: bin/info checks it."""

    def __init__(self, option, optional=False):
        super().__init__(optional=optional)
        self.option = option

    def check(self, value):
        value = super().check(value)
        why = registry.refusal(["--" + self.option["name"], value])
        if why:
            raise Invalid(f"is not a value of bin/train --{self.option['name']}: {why}")
        return value


def arch_option_fields():
    """{JSON key: field} of every option an architecture may give (harness/registry.py): what the results
    files record of an architecture's own options, each optional (files written before an option have
    none of it)."""
    fields = {}
    for o in registry.arch_options():
        fields[o["json_key"]] = (OptionText(o, optional=True) if o["kind"] == "text" else
                                 Int(o["min"], o["max"], optional=True) if o["kind"] == "size" else
                                 Num(o["min"], o["max"], optional=True))
    return fields


def family_field():
    """An architecture's family, as registry.families() names them (older files have none)."""
    return Text(choices=registry.families(), optional=True)


def within(what, fn, *args):
    """fn(*args), an Invalid from it prefixed with `what` (where in the value it was)."""
    try:
        return fn(*args)
    except Invalid as e:
        raise Invalid(f"{what} {e}") from None


class Obj(Field):
    """A JSON object with these fields (a dict of name -> Field); keys it does not name are kept as
    they are, or refused with closed=True. rule: a function of the checked object that says what is
    wrong across its fields (a string), or None."""

    def __init__(self, fields, closed=False, rule=None, optional=False):
        super().__init__(optional)
        self.fields, self.closed, self.rule = fields, closed, rule

    def check(self, value):
        if not isinstance(value, dict):
            raise Invalid(f"must be an object (got {shown(value)})")
        if self.closed:
            extra = sorted(k for k in value if k not in self.fields)
            if extra:
                raise Invalid(f"has a key it should not: {shown(extra[0])}")
        out = dict(value)
        for key, field in self.fields.items():
            out[key] = within(f"'{key}'", field.json, value.get(key))
        why = self.rule(out) if self.rule else None
        if why:
            raise Invalid(why)
        return out


def sized(value, kind, min_len):
    """Invalid unless value is a `kind` (list: a JSON list, dict: an object) of min_len entries or more."""
    if not isinstance(value, kind):
        raise Invalid(f"must be {'a list' if kind is list else 'an object'} (got {shown(value)})")
    if len(value) < min_len:
        raise Invalid(f"must have at least {min_len} entries")


class ListOf(Field):
    """A JSON list of `item`s, at least min_len of them, no two agreeing on every key of `unique`
    (the same run twice)."""

    def __init__(self, item, min_len=0, unique=(), optional=False):
        super().__init__(optional)
        self.item, self.min_len, self.unique = item, min_len, unique

    def check(self, value):
        sized(value, list, self.min_len)
        items = [within(f"entry {i + 1}:", self.item.json, v) for i, v in enumerate(value)]
        refuse_duplicates(items, self.unique)
        return items


class MapOf(Field):
    """A JSON object whose keys match key_pattern (whole) and whose values are all `item`, at least
    min_len of them."""

    def __init__(self, key_pattern, item, min_len=0, optional=False):
        super().__init__(optional)
        self.key_pattern, self.item, self.min_len = key_pattern, item, min_len

    def check(self, value):
        sized(value, dict, self.min_len)
        for key in value:
            if not re.fullmatch(self.key_pattern, key):
                raise Invalid(f"has key {shown(key)}, not of the form {self.key_pattern}")
        return {k: within(f"'{k}'", self.item.json, v) for k, v in value.items()}


# ---- reading the files -------------------------------------------------------------

def read_text(path):
    """A results file's text: a regular file opened without blocking (not a directory, FIFO or
    device), not past MAX_BYTES (harness/files.py's read_input), UTF-8."""
    data = read_input(path, MAX_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        die(f"{path} is not UTF-8 text (byte {e.start})")


def _unique_keys(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise Invalid(f"has the key {shown(dup)} twice")
    return dict(pairs)


def _no_constant(name):
    raise Invalid(f"has {name}, which JSON has not")


def parse_json(text):
    """JSON text as Python values; Invalid for bad JSON, a key given twice in an object, NaN or
    Infinity (Python's extensions), or nesting too deep to read."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except Invalid:
        raise
    except ValueError as e:  # JSONDecodeError, and an integer of more digits than Python converts
        raise Invalid(f"is not JSON ({str(e).splitlines()[0]})") from None
    except RecursionError:
        raise Invalid("nests too deep") from None


def load_json(path, schema):
    """The JSON file at path, checked against `schema` (a Field); dies with one line if it is not."""
    text = read_text(path)
    try:
        return schema.json(parse_json(text))
    except Invalid as e:
        die(f"{path}: {e}")


def load_csv(path, columns, unique=(), extra=None):
    """The rows of the CSV file at path as dicts of the schema's columns (a dict of name -> Field;
    an optional field's column may be missing), checked; rows that agree on every column of `unique`
    are refused. extra: (a compiled pattern, a Field): the columns whose names match it (whole) are read
    too, each with that field. Dies with one line at the first problem."""
    text = read_text(path)
    try:
        table = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    except csv.Error as e:
        die(f"{path}: is not CSV ({e})")
    if not table:
        die(f"{path}: is empty (no header)")
    header = table[0]
    if len(set(header)) != len(header):
        die(f"{path}: the header names a column twice")
    if extra:
        columns = dict(columns, **{k: extra[1] for k in header if k not in columns and extra[0].fullmatch(k)})
    missing = [k for k, f in columns.items() if not f.optional and k not in header]
    if missing:
        die(f"{path}: has no column '{missing[0]}'")
    rows = []
    for line, cells in enumerate(table[1:], 2):
        if len(cells) != len(header):
            die(f"{path}: row {line} has {len(cells)} cells, the header {len(header)}")
        cell = dict(zip(header, cells))
        try:
            rows.append({k: within(f"row {line}: '{k}'", f.text, cell.get(k)) for k, f in columns.items()})
        except Invalid as e:
            die(f"{path}: {e}")
    try:
        refuse_duplicates(rows, unique)
    except Invalid as e:
        die(f"{path}: {e}")
    return rows


def refuse_duplicates(rows, keys):
    """Invalid if two rows agree on every one of `keys` (the same run twice)."""
    if not keys:
        return
    seen = set()
    for i, r in enumerate(rows, 1):
        key = tuple(repr(r.get(k)) for k in keys)
        if key in seen:
            raise Invalid(f"entry {i} repeats a run ({', '.join(f'{k} {shown(r.get(k))}' for k in keys)})")
        seen.add(key)


# ---- bin/train's log --------------------------------------------------------------

# What the harnesses read of a bin/train --log file. A loss may be inf (a run that blew up);
# NaN is a value the row has not, as bin/train writes it.
TRAIN_LOG = {"step": Int(0), "tokens": Int(0),
             **{k: Num(finite=False, nan_is_none=True) for k in ("train_loss", "val_loss", "val_bits_per_byte", "lr",
                                                                  "grad_norm")},
             **{k: Num(0, nan_is_none=True) for k in ("ms_per_step", "elapsed_s", "threads")}}


def read_train_log(path):
    """The rows of a bin/train --log file (CSV, or JSON lines if it ends in .jsonl) as dicts of the
    columns the harnesses read (TRAIN_LOG), a value a row does not have as None."""
    if not path.endswith(".jsonl"):
        return load_csv(path, TRAIN_LOG)
    row = Obj(TRAIN_LOG)
    rows = []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if line.strip():
            try:
                rows.append(within(f"line {n}:", row.json, parse_json(line)))
            except Invalid as e:
                die(f"{path}: {e}")
    return rows
