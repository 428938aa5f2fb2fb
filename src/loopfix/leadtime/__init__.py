"""`loopfix warn`: fit the own-model early warning (`states.warning`) on a model's scan records
and measure its lead over the text tier on held-out prompts (docs/states.md)."""
