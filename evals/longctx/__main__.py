import sys

from evals.longctx.run import main

sys.exit(main())
