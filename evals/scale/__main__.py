import sys

from evals.scale.run import main

sys.exit(main())
