import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import ImportDialog from './ImportDialog.svelte';
import PlanEditor from '../pages/PlanEditor.svelte';
import { setImported } from '../lib/importHandoff';

function mockFetch(status: number, body: unknown) {
  const f = vi.fn(async (_url: string, _init: RequestInit) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } }));
  vi.stubGlobal('fetch', f);
  return f;
}

afterEach(() => {
  vi.unstubAllGlobals();
  location.hash = '';
});

const plan = { name: 'curl GET a.test/x', requests: [{ name: 'GET http://a.test/x', method: 'GET', url: 'http://a.test/x' }], load: { executor: 'constant-vus', vus: 1, duration: '30s' } };
const CURL = "curl 'http://a.test/x' -H 'Accept: */*'";

describe('ImportDialog', () => {
  it('sends the pasted text for detection and opens a plan with nothing skipped at once', async () => {
    const f = mockFetch(200, { plan, skipped: [], format: 'curl' });
    const onopen = vi.fn();
    render(ImportDialog, { onopen, oncancel: vi.fn() });
    await fireEvent.input(screen.getByTestId('import-text'), { target: { value: CURL } });
    await fireEvent.click(screen.getByTestId('import-submit'));
    await waitFor(() => expect(onopen).toHaveBeenCalledTimes(1));
    expect(onopen.mock.calls[0][0].plan.name).toBe('curl GET a.test/x');
    const [url, init] = f.mock.calls[0];
    expect(url).toBe('/api/import');
    expect(init.method).toBe('POST');
    expect(JSON.parse(String(init.body))).toEqual({ input: CURL, keep_assets: false });
  });

  it('names the chosen format and lists what was skipped before opening', async () => {
    const f = mockFetch(200, { plan, skipped: [{ element: 'entry 2 GET /app.css', reason: 'a static asset' }], format: 'har' });
    const onopen = vi.fn();
    render(ImportDialog, { onopen, oncancel: vi.fn() });
    await fireEvent.input(screen.getByTestId('import-text'), { target: { value: '{"log":{"entries":[]}}' } });
    await fireEvent.change(screen.getByTestId('import-format'), { target: { value: 'har' } });
    await fireEvent.click(screen.getByTestId('import-keep-assets'));
    await fireEvent.click(screen.getByTestId('import-submit'));
    await waitFor(() => expect(screen.getByTestId('import-skipped').textContent).toContain('entry 2 GET /app.css'));
    expect(screen.getByTestId('import-skipped').textContent).toContain('a static asset');
    expect(screen.getByTestId('import-result').textContent).toContain('har');
    expect(f.mock.calls[0][0]).toBe('/api/import?format=har');
    expect(JSON.parse(String(f.mock.calls[0][1].body)).keep_assets).toBe(true);
    expect(onopen).not.toHaveBeenCalled();
    await fireEvent.click(screen.getByTestId('import-open'));
    expect(onopen).toHaveBeenCalledTimes(1);
  });

  it('shows notes apart from what was not imported', async () => {
    mockFetch(200, {
      plan,
      skipped: [
        { element: 'GET /x', reason: 'needs credentials (k)', note: true },
        { element: 'servers[1:]', reason: 'only the first server is used' },
      ],
      format: 'openapi',
    });
    render(ImportDialog, { onopen: vi.fn(), oncancel: vi.fn() });
    await fireEvent.input(screen.getByTestId('import-text'), { target: { value: 'openapi: 3.0.3' } });
    await fireEvent.click(screen.getByTestId('import-submit'));
    await waitFor(() => expect(screen.getByTestId('import-notes').textContent).toContain('needs credentials'));
    expect(screen.getByTestId('import-notes').textContent).not.toContain('only the first server');
    expect(screen.getByTestId('import-skipped').textContent).toContain('only the first server');
    expect(screen.getByTestId('import-skipped').textContent).not.toContain('needs credentials');
    expect(screen.getByText('Not imported (1) — each element and why:')).toBeTruthy();
    expect(screen.getByText('Notes (1) — imported, but check these:')).toBeTruthy();
  });

  it("shows the server's reason for input it cannot read, and asks for text before sending", async () => {
    const f = mockFetch(400, { error: { code: 'bad_request', message: 'input: har: not valid JSON', fields: { input: 'har: not valid JSON' } } });
    render(ImportDialog, { onopen: vi.fn(), oncancel: vi.fn() });
    await fireEvent.click(screen.getByTestId('import-submit'));
    expect(screen.getByTestId('import-error').textContent).toContain('Paste the text');
    expect(f).not.toHaveBeenCalled();
    await fireEvent.input(screen.getByTestId('import-text'), { target: { value: '{nope' } });
    await fireEvent.click(screen.getByTestId('import-submit'));
    await waitFor(() => expect(screen.getByTestId('import-error').textContent).toContain('not valid JSON'));
  });

  it('the editor opens an imported plan unsaved', async () => {
    mockFetch(200, {});
    setImported({ ...plan, name: 'Imported plan' });
    render(PlanEditor, {});
    await waitFor(() => expect((screen.getByLabelText('Name') as HTMLInputElement).value).toBe('Imported plan'));
    expect(screen.getByDisplayValue('http://a.test/x')).toBeTruthy();
  });
});
