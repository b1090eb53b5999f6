"""nanscope: why did my training job go bad, on which rank did it start, and what do I do now."""

__version__ = "0.1.0"
