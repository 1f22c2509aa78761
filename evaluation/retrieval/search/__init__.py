"""The search engine: plain modules, no Django import (tests and benchmarks use them directly)."""
