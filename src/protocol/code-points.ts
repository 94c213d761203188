// String order by Unicode code point: the order canonical JSON sorts keys in and the order state
// resolution means by "the smaller event_id". JavaScript's `<` compares UTF-16 code units, which
// disagrees only where, at the first difference, one string has a surrogate (a character above
// U+FFFF) and the other a unit in U+E000–U+FFFF.

export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointWeight(x) - codePointWeight(y);
  }
  return a.length - b.length;
}

/** A code unit's rank: surrogates lifted above U+E000–U+FFFF, where their code points lie. */
function codePointWeight(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}
