from evals.llm.run import main

raise SystemExit(main())
