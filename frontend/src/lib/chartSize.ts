// Chart sizing shared by the uPlot components.
import type uPlot from 'uplot';

/**
 * followWidth keeps a chart as wide as its container: when el's width changes (ResizeObserver),
 * the plot is resized to it at height(). With debounceMs > 0 it waits until the width has been
 * still that long (the live charts, which redraw every second). Returns the function that stops
 * watching; the caller still destroys the plot.
 */
export function followWidth(
  el: HTMLElement,
  plot: () => uPlot | null,
  height: () => number,
  debounceMs = 0,
): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let lastWidth = el.clientWidth;
  const fit = () => {
    timer = null;
    const w = el.clientWidth;
    const p = plot();
    if (p && w > 0 && w !== lastWidth) {
      lastWidth = w;
      p.setSize({ width: w, height: height() });
    }
  };
  const ro = new ResizeObserver(() => {
    if (debounceMs <= 0) {
      fit();
      return;
    }
    if (timer) clearTimeout(timer);
    timer = setTimeout(fit, debounceMs);
  });
  ro.observe(el);
  return () => {
    ro.disconnect();
    if (timer) clearTimeout(timer);
  };
}
