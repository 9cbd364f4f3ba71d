import sys

from evals.agents.run import main

sys.exit(main())
