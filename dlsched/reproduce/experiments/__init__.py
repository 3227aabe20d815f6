"""One module per registered experiment (imported by ``registry.experiments()``)."""
