"""A toy course for coursekit's tests: check helpers (`checks`) and the course hooks the kit calls (`kit`)."""
