"""Calibrating the simulator to measured curves (issue 16, part 1).

- :mod:`~trainer.calibration.realcases`: a real dataset's cases with every sample of each size;
- :mod:`~trainer.calibration.noise`: each curve's own noise (sample CV, spread between visits);
- :mod:`~trainer.calibration.fit`: system identification, the simulator's workload parameters
  fitted by least squares on log throughput with the measured profile as priors;
- :mod:`~trainer.calibration.coverage`: does a simulated corpus hold, for each real case,
  neighbours in the trainer's feature space whose curves match the real one within its noise;
- :mod:`~trainer.calibration.simcorpus_v2`: the sim-v2 corpus drawn around the fitted cases and
  from the broad sim-v1 prior; :mod:`~trainer.calibration.build` fits, draws and writes it, and
  :mod:`~trainer.calibration.command` is its ``pooltune-trainer make-sim-v2`` command.

The figures: ``python -m benchmarks.calibration``. See docs/simulator.md.
"""
