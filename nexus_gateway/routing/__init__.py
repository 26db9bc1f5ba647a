"""Tool retrieval: from a request in words to the tools that can serve it."""
