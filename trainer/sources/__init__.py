"""Where training examples come from: the service's database and the dataset files."""
