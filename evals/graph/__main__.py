import sys

from evals.graph.run import main

sys.exit(main())
