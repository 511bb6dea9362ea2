import { describe, expect, it } from 'vitest';
import { allOf } from '../../sdk/plugin/all-of.ts';

/**
 * `allOf` (sdk/plugin/all-of.ts): Promise.all for a call's concurrent host calls that throws
 * only once every branch has settled, so no branch of a failed call runs on after its answer.
 */
describe('allOf', () => {
  it('answers every value in order, like Promise.all', async () => {
    const later = new Promise<string>((resolve) => setTimeout(() => resolve('b'), 5));
    await expect(allOf([Promise.resolve(1), later, Promise.resolve(null)])).resolves.toEqual([1, 'b', null]);
    await expect(allOf([])).resolves.toEqual([]);
  });

  it('throws the first failure only after the other branches have finished their steps', async () => {
    const steps: string[] = [];
    const failing = (async () => { steps.push('fail'); throw new Error('database unavailable'); })();
    const slow = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      steps.push('second host call');
      await new Promise((resolve) => setTimeout(resolve, 10));
      steps.push('third host call');
      return 'done';
    })();
    await expect(allOf([failing, slow])).rejects.toThrow('database unavailable');
    // With Promise.all the rejection arrives while the slow branch still has both steps to go.
    expect(steps).toEqual(['fail', 'second host call', 'third host call']);
  });

  it('throws the failure of the earliest branch in the list, whichever failed first in time', async () => {
    const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('first in the list')), 10));
    const early = Promise.reject(new Error('second in the list'));
    await expect(allOf([late, early])).rejects.toThrow('first in the list');
  });
});
