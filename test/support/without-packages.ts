// Loaded with `node --import` before a child's code: packages named in FENCELOCK_WITHOUT (comma-separated) are
// not found, as in a project that never installed them. Only their resolution fails: nothing else is touched.
import { register } from 'node:module';

const hooks = `
const without = new Set(${JSON.stringify((process.env.FENCELOCK_WITHOUT ?? '').split(',').filter(Boolean))});
export async function resolve(specifier, context, next) {
  if (without.has(specifier)) {
    const error = new Error("Cannot find package '" + specifier + "' (not installed in this test)");
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
