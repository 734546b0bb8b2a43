// A one-shot message carried across a navigation (e.g. "Saved" after a new plan got its id).
let pending = '';

export function setFlash(msg: string): void {
  pending = msg;
}

export function takeFlash(): string {
  const m = pending;
  pending = '';
  return m;
}
