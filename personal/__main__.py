from personal.cli import main

main()
