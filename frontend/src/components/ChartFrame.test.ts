import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { render } from '@testing-library/svelte';
import type uPlot from 'uplot';
import { flushSync } from 'svelte';
import ChartFrameHost from '../test-fixtures/ChartFrameHost.svelte';

// A uPlot that records what the frame does with it (jsdom cannot draw).
const plots = vi.hoisted(() => {
  class FakePlot {
    static made: FakePlot[] = [];
    static failWith = '';
    destroyed = false;
    sets: unknown[] = [];
    sizes: { width: number; height: number }[] = [];
    constructor(
      public opts: { width: number; height: number; title?: string },
      public data: unknown,
      public el: HTMLElement,
    ) {
      if (FakePlot.failWith) throw new Error(FakePlot.failWith);
      FakePlot.made.push(this);
    }
    setData(d: unknown) {
      this.sets.push(d);
    }
    setSize(s: { width: number; height: number }) {
      this.sizes.push(s);
    }
    destroy() {
      this.destroyed = true;
    }
  }
  return FakePlot;
});
vi.mock('uplot', () => ({ default: plots }));

// A ResizeObserver the test fires by hand, and a box width the test sets.
let fire: () => void = () => {};
let observing = 0;
let width = 640;

beforeEach(() => {
  plots.made = [];
  plots.failWith = '';
  observing = 0;
  width = 640;
  vi.stubGlobal(
    'ResizeObserver',
    class {
      constructor(cb: () => void) {
        fire = cb;
      }
      observe() {
        observing++;
      }
      disconnect() {
        observing--;
      }
    },
  );
  vi.spyOn(HTMLElement.prototype, 'clientWidth', 'get').mockImplementation(() => width);
});

afterEach(() => {
  vi.unstubAllGlobals();
});

const cols = (n: number): uPlot.AlignedData => [Array.from({ length: n }, (_, i) => i + 1), Array.from({ length: n }, () => 5)];

interface Host {
  setData(d: uPlot.AlignedData): void;
  rebuild(): void;
  setUnit(u: string): void;
}

function frame(extra: Record<string, unknown> = {}) {
  const props = { options: () => ({ title: 'made by options', series: [] }), initial: cols(3), ...extra };
  const r = render(ChartFrameHost, { props: props as never });
  const host = r.component as unknown as Host;
  const act = (f: (h: Host) => void) => flushSync(() => f(host));
  return { ...r, act };
}

describe('ChartFrame', () => {
  it('creates the plot once, as wide as its box, with the chart options and data', () => {
    const created: uPlot[] = [];
    const { container } = frame({ oncreate: (p: uPlot) => created.push(p) });
    expect(plots.made).toHaveLength(1);
    const p = plots.made[0];
    expect(p.opts).toMatchObject({ title: 'made by options', width: 640, height: 150 });
    expect(p.data).toEqual(cols(3));
    expect(p.el).toBe(container.querySelector('[data-testid=chart-x] .plot'));
    expect(created).toEqual([p]);
    expect(p.sets).toEqual([]); // the data it was made with is not set again
    const box = container.querySelector('[data-testid=chart-x]')!;
    expect(box.getAttribute('data-points')).toBe('3');
    expect(box.querySelector('.chart-title')!.textContent).toMatch(/^X\s*req\/s$/);
  });

  it('hands new data to the same plot; other changes neither set data nor re-create', () => {
    const { act, container } = frame();
    act((h) => h.setUnit('ms'));
    expect(container.querySelector('.chart-title')!.textContent).toContain('ms');
    expect(plots.made[0].sets).toEqual([]);
    const next = cols(4);
    act((h) => h.setData(next));
    act((h) => h.setData(cols(5)));
    expect(plots.made).toHaveLength(1);
    expect(plots.made[0].sets).toEqual([next, cols(5)]);
    expect(container.querySelector('[data-testid=chart-x]')!.getAttribute('data-points')).toBe('5');
  });

  it('follows the box width and never goes under 200 px at creation', async () => {
    width = 120;
    frame();
    const p = plots.made[0];
    expect(p.opts.width).toBe(200);
    width = 900;
    fire();
    fire(); // same width: nothing
    expect(p.sizes).toEqual([{ width: 900, height: 150 }]);
  });

  it('destroys the plot and stops watching the box on unmount', () => {
    const { unmount } = frame();
    expect(observing).toBe(1);
    unmount();
    expect(plots.made[0].destroyed).toBe(true);
    expect(observing).toBe(0);
  });

  it('re-creates the plot only when what `rebuild` reads changes; null options mean no plot', () => {
    let empty = true;
    const options = () => (empty ? null : { series: [] });
    const { act, container } = frame({ options });
    expect(plots.made).toHaveLength(0);
    empty = false;
    act((h) => h.setData(cols(2))); // options are not tracked: still no plot
    expect(plots.made).toHaveLength(0);
    act((h) => h.rebuild());
    expect(plots.made).toHaveLength(1);
    expect(plots.made[0].data).toEqual(cols(2));
    act((h) => h.rebuild());
    expect(plots.made).toHaveLength(2);
    expect(plots.made[0].destroyed).toBe(true);
    expect(plots.made[1].destroyed).toBe(false);
    expect(container.querySelector('.muted')).toBeNull();
  });

  it('says why when the plot cannot be made', () => {
    plots.failWith = 'no canvas';
    const { container } = frame();
    expect(container.querySelector('.muted')!.textContent).toContain('no canvas');
  });
});
