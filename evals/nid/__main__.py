import sys

from evals.nid.run import main

sys.exit(main())
