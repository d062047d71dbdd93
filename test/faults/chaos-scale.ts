// Run length of the chaos tests: short in the normal suite, long with FENCELOCK_CHAOS=long (npm run test:chaos).
export const LONG = process.env.FENCELOCK_CHAOS === 'long';
export const scale = (short: number, long: number): number => (LONG ? long : short);
