import { configure } from '@testing-library/svelte';

// waitFor polls until its condition holds; its timeout only bounds a hang. The default 1 s is
// less than a render takes on a busy machine (make test beside stress-ng), so it is 10 s here.
configure({ asyncUtilTimeout: 10_000 });

// jsdom lacks these browser APIs; the run view's charts use them.
class NoopResizeObserver {
  observe() {}
  unobserve() {}
  disconnect() {}
}
if (!('ResizeObserver' in globalThis)) {
  (globalThis as unknown as { ResizeObserver: unknown }).ResizeObserver = NoopResizeObserver;
}
if (typeof window.matchMedia !== 'function') {
  (window as unknown as { matchMedia: unknown }).matchMedia = () => ({
    matches: false,
    addEventListener() {},
    removeEventListener() {},
    addListener() {},
    removeListener() {},
  });
}
// jsdom has no canvas: give uPlot a 2D context whose methods do nothing, so charts mount in tests.
function fakeContext(canvas: HTMLCanvasElement): CanvasRenderingContext2D {
  const noop = () => undefined;
  const state: Record<string | symbol, unknown> = { canvas };
  return new Proxy(state, {
    get(target, key) {
      if (key in target) return target[key];
      if (key === 'measureText') return () => ({ width: 0 });
      return noop;
    },
    set(target, key, value) {
      target[key] = value;
      return true;
    },
  }) as unknown as CanvasRenderingContext2D;
}
HTMLCanvasElement.prototype.getContext = function (this: HTMLCanvasElement) {
  return fakeContext(this);
} as unknown as typeof HTMLCanvasElement.prototype.getContext;
if (typeof (globalThis as { Path2D?: unknown }).Path2D === 'undefined') {
  (globalThis as unknown as { Path2D: unknown }).Path2D = class {
    moveTo() {}
    lineTo() {}
    rect() {}
    arc() {}
    closePath() {}
    bezierCurveTo() {}
    addPath() {}
  };
}
