"""The household memory: one SQLite file per home holding people, object instances, where each
was last seen, who owns what (with provenance and history) and preferences; statements that
change it ("Tom gave his lamp to Anna") read by the same extractor stack as the summaries."""
from personal.memory.store import HouseholdMemory, MemoryFileError  # noqa: F401
