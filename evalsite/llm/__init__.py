"""The chat-model client every app shares: an OpenAI-compatible endpoint called concurrently with retries,
its replies read as JSON against a schema, and a cache of every successful call so that a re-run costs
nothing and reads the same."""
