import { afterEach, describe, expect, it, vi } from 'vitest';
import type uPlot from 'uplot';
import { followWidth } from './chartSize';

// A ResizeObserver the test fires by hand.
let fire: () => void = () => {};
let disconnected = false;
class FakeObserver {
  constructor(cb: () => void) {
    fire = cb;
  }
  observe() {}
  disconnect() {
    disconnected = true;
  }
}

function setup(debounceMs: number) {
  vi.stubGlobal('ResizeObserver', FakeObserver);
  disconnected = false;
  let width = 300;
  const el = { get clientWidth() { return width; } } as unknown as HTMLElement;
  const sizes: { width: number; height: number }[] = [];
  const plot = { setSize: (s: { width: number; height: number }) => sizes.push(s) } as unknown as uPlot;
  const stop = followWidth(el, () => plot, () => 150, debounceMs);
  return { setWidth: (w: number) => (width = w), sizes, stop };
}

afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe('followWidth', () => {
  it('resizes the plot when the container width changes, not otherwise', () => {
    const c = setup(0);
    fire();
    expect(c.sizes).toEqual([]); // same width
    c.setWidth(420);
    fire();
    c.setWidth(0); // hidden: keep the last size
    fire();
    expect(c.sizes).toEqual([{ width: 420, height: 150 }]);
    c.stop();
    expect(disconnected).toBe(true);
  });

  it('with a debounce, resizes once after the width settles', () => {
    vi.useFakeTimers();
    const c = setup(120);
    c.setWidth(400);
    fire();
    c.setWidth(500);
    fire();
    vi.advanceTimersByTime(100);
    expect(c.sizes).toEqual([]);
    vi.advanceTimersByTime(50);
    expect(c.sizes).toEqual([{ width: 500, height: 150 }]);
    c.setWidth(600);
    fire();
    c.stop(); // a pending resize is dropped
    vi.advanceTimersByTime(200);
    expect(c.sizes).toHaveLength(1);
  });
});
