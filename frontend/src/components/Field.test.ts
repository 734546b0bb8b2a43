import { describe, expect, it } from 'vitest';
import { fireEvent, render } from '@testing-library/svelte';
import FieldHost from '../test-fixtures/FieldHost.svelte';

interface Host {
  values(): { value: string; mode: string };
}

describe('Field', () => {
  it('names its control by the label and binds the value, for a text input and a snippet control', async () => {
    const { container, getByLabelText, component } = render(FieldHost, {});
    const input = getByLabelText(/Duration/) as HTMLInputElement;
    expect(input.id).toBe('f-dur');
    expect(input.className).toContain('mono');
    expect(input.placeholder).toBe('10s');
    expect(container.querySelector('label[for=f-dur]')!.textContent).toBe('Duration optional');
    expect(container.querySelector('label[for=f-dur] .muted')!.textContent).toBe('optional');
    const select = getByLabelText('Mode') as HTMLSelectElement;
    expect(select.tagName).toBe('SELECT');
    await fireEvent.input(input, { target: { value: '1m' } });
    await fireEvent.change(select, { target: { value: 'a' } });
    expect((component as unknown as Host).values()).toEqual({ value: '1m', mode: 'a' });
  });

  it('is valid, described by its hint only, without errors', () => {
    const { container } = render(FieldHost, { hint: 'how long' });
    const input = container.querySelector('#f-dur')!;
    expect(input.getAttribute('aria-invalid')).toBe('false');
    expect(input.getAttribute('aria-describedby')).toBe('f-dur-hint');
    expect(container.querySelector('#f-dur-hint')!.textContent).toBe('how long');
    expect(container.querySelector('#f-mode')!.hasAttribute('aria-describedby')).toBe(false);
    expect(container.querySelector('.field-error')).toBeNull();
  });

  it('shows each error under its control, marks it invalid and points to the errors', () => {
    const problems = [
      { path: 'load.duration', message: 'must be positive' },
      { path: 'load.duration[1]', message: 'too long' },
    ];
    const { container } = render(FieldHost, { problems, hint: 'how long' });
    const input = container.querySelector('#f-dur')!;
    expect(input.getAttribute('aria-invalid')).toBe('true');
    expect(input.getAttribute('aria-describedby')).toBe('f-dur-hint f-dur-errors');
    const errors = container.querySelector('#f-dur-errors')!;
    expect(input.closest('.field')!.contains(errors)).toBe(true);
    expect([...errors.querySelectorAll('[role=alert]')].map((e) => [e.getAttribute('data-field-error'), e.textContent])).toEqual([
      ['load.duration', 'must be positive'],
      ['load.duration[1]', 'load.duration[1]: too long'],
    ]);
    const select = container.querySelector('#f-mode')!;
    expect(select.getAttribute('aria-invalid')).toBe('true');
    expect(select.getAttribute('aria-describedby')).toBe('f-mode-errors');
  });
});
