from nanscope.cli import main

raise SystemExit(main())
