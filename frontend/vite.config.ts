/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { svelteTesting } from '@testing-library/svelte/vite';

declare const process: { env: Record<string, string | undefined> };

// The backend (volley serve) listens on 127.0.0.1:8181 in development; override with VOLLEY_API.
const api = process.env.VOLLEY_API ?? 'http://127.0.0.1:8181';

export default defineConfig({
  plugins: [svelte(), svelteTesting()],
  build: {
    outDir: 'dist',
    // dist/.gitkeep must survive (the Go embed needs a file); scripts/clean-dist.mjs empties the rest.
    emptyOutDir: false,
    target: 'es2022',
    chunkSizeWarningLimit: 400,
  },
  server: {
    proxy: {
      '/api': { target: api, ws: true, changeOrigin: true },
    },
  },
  test: {
    environment: 'jsdom',
    // Worker threads rather than child processes (vitest's default 'forks'): each test file keeps
    // its own isolated jsdom and module graph, and the suite took 108 s instead of 393 s on two
    // busy cores (measured side by side, the same 298 tests).
    pool: 'threads',
    include: ['src/**/*.test.ts'],
    setupFiles: ['src/test-setup.ts'],
    restoreMocks: true,
    // A hang guard, not a margin: on a busy machine (make test beside stress-ng, other builds) the
    // first render of a page in jsdom alone was measured at 5.5 s, past vitest's default 5 s.
    // Every assertion waits for a condition that must come true; only a hang takes this long.
    testTimeout: 30_000,
  },
});
