import sys

from evals.eo.run import main

sys.exit(main())
