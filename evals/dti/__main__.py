import sys

from evals.dti.run import main

sys.exit(main())
