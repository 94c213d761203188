// Shared pieces of the identifier parsers: the brand and the error they throw.

import { Buffer } from 'node:buffer';
import { HearthError } from '../errors.js';

declare const brand: unique symbol;

/** A string that one of the parsers in this module has checked; a plain string does not convert to it. */
export type Branded<B extends string> = string & { readonly [brand]: B };

export interface ParseOptions {
  /** The errcode of the thrown HearthError (status 400). Default `M_INVALID_PARAM`. */
  readonly errcode?: string;
}

/** User IDs, room IDs, aliases and event IDs, counting sigil and server name. */
export const MAX_ID_BYTES = 255;

export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** A short, escaped rendering of the input for error messages. */
function preview(s: string): string {
  const cut = s.length > 64 ? `${s.slice(0, 64)}…` : s;
  return JSON.stringify(cut);
}

function fail(label: string, input: string, problem: string, opts?: ParseOptions): never {
  throw new HearthError(400, opts?.errcode ?? 'M_INVALID_PARAM', `Invalid ${label} ${preview(input)}: ${problem}`);
}

/** Runs `problemOf` on a string input and throws a HearthError naming the first problem found. */
export function checked(
  label: string,
  input: unknown,
  problemOf: (s: string) => string | undefined,
  opts?: ParseOptions,
): string {
  if (typeof input !== 'string') {
    const got = input === null ? 'null' : Array.isArray(input) ? 'array' : typeof input;
    throw new HearthError(400, opts?.errcode ?? 'M_INVALID_PARAM', `Invalid ${label}: expected a string, got ${got}`);
  }
  const problem = problemOf(input);
  if (problem !== undefined) fail(label, input, problem, opts);
  return input;
}
