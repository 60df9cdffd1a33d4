namespace normd {}
