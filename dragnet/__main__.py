from dragnet.cli import main

main()
