import sys

from evals.perf.run import main

sys.exit(main())
