from benchmarks.climb.cli import main

raise SystemExit(main())
