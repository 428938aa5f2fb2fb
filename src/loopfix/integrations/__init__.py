"""loopfix inside other serving stacks: `loopfix.integrations.litellm` is a LiteLLM proxy
guardrail that watches chat completions with the serve's own watch (docs/integrations.md)."""
