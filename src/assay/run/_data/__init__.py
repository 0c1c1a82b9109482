"""Reading a run's data: one road, from a source through one mapping to one validation.

Whatever a door holds (``assay run``'s file, :func:`~assay.evaluate`'s list or table, a
Ray dataset's samples, the pytest plugin's sample), it enters here by :func:`read_rows`
(or :func:`open_dataset`, which reads through it to check and fingerprint the data before
any judge call; a run enters by :func:`open_rows`, which also checks the fields its
metrics need). ``_read`` opens, hashes and chains; a record goes through three rooms, each
once, and none calls another back:

- a source (``_sources/``: ``files`` tells the format from the suffix, then one module per
  format: ``jsonl``, ``json``, ``csv``, ``parquet``, ``arrow``, ``dataframe``, ``hf``,
  ``python``; ``spans`` for a JSON file that is an OTLP export, one record per trace)
  yields raw records (and the columns it knows before them), says what is wrong with a
  line, a cell or a trace, and knows nothing of the mapping;
- the mapping (``_mapping``) turns a record into fields: the aliases other tools use,
  ``--map``, columns named but for their case, a table's cells decoded by their field;
- the validation (``_validate``) makes the fields a :class:`Row` or a located
  :class:`~assay.errors.SampleError`: size limits, valid text, required fields, unique ids.

``docs/design/input.md`` explains the choices.
"""

from assay.run._data._mapping import ALIASES, IDEAL_CONTEXT_COLUMNS, LIST_ALIASES, likely_column, map_advice
from assay.run._data._read import (
    DatasetSource,
    from_arrow,
    from_dataframe,
    from_hf_dataset,
    open_dataset,
    open_rows,
    read_csv,
    read_dataset,
    read_jsonl,
    read_parquet,
    read_rows,
    sample_from_record,
)
from assay.run._data._rows import (
    DEFAULT_MAX_FIELD_CHARS,
    DEFAULT_MAX_ROW_CHARS,
    MAX_NESTING,
    NOTES,
    Row,
    SizeLimits,
)
from assay.run._data._sources.files import DATASET_SUFFIXES, check_data_file, check_format
from assay.run._data._sources.jsonl import count_rows, json_lines
from assay.run._data._validate import required_fields

__all__ = [
    "ALIASES",
    "DATASET_SUFFIXES",
    "DEFAULT_MAX_FIELD_CHARS",
    "DEFAULT_MAX_ROW_CHARS",
    "IDEAL_CONTEXT_COLUMNS",
    "LIST_ALIASES",
    "MAX_NESTING",
    "NOTES",
    "DatasetSource",
    "Row",
    "SizeLimits",
    "check_data_file",
    "check_format",
    "count_rows",
    "from_arrow",
    "from_dataframe",
    "from_hf_dataset",
    "json_lines",
    "likely_column",
    "map_advice",
    "open_dataset",
    "open_rows",
    "read_csv",
    "read_dataset",
    "read_jsonl",
    "read_parquet",
    "read_rows",
    "required_fields",
    "sample_from_record",
]
