// The command line of the diagnostic scripts beside the benchmark (js-only, functions-per-pair, handover-gap,
// handover-split, profile-w1): `--name N` options that take a number, and the positional arguments around them.
// bench/run.ts has its own (args.ts).

/** The number after `name` (`--nodes`), or `fallback` when the option is not given. */
export function numberOption(argv: readonly string[], name: string, fallback: number): number {
  const at = argv.indexOf(name);
  return at >= 0 ? Number(argv[at + 1]) : fallback;
}

/** The arguments that are neither an option (`--…`) nor the value after one of the `valued` options. */
export function positionals(argv: readonly string[], valued: readonly string[]): string[] {
  return argv.filter((a, i) => !a.startsWith('--') && !valued.includes(argv[i - 1] ?? ''));
}
