"""The decision core: options, schemas, the menu, reply extraction and validation."""
