"""Where the data of a run comes from: one module per source."""
