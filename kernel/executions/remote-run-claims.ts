import type { Database } from '../db/database.ts';
import type { RemoteStopRecipe } from './remote-run.ts';

/**
 * The remote run an execution follows is claimed by its status URL (`executions.remote_run_url`,
 * unique): a remote id is scoped to the Keel run whose create it answered. Another execution's
 * claim on the same URL (a run server answering with a run it already started for another run,
 * of this company or another) is refused, so that nothing of that run is read into this run's log
 * nor stopped in its name. The recipe of the stop is stored in the same statement. Answers false
 * when another execution holds the claim; a repeated claim of the same execution succeeds.
 */
export async function claimRemoteRun(db: Database, executionId: string, runUrl: URL, recipe: RemoteStopRecipe): Promise<boolean> {
  try {
    await db.exec('update executions set remote_run_url = ?, remote_stop = ?::jsonb where id = ?', [runUrl.href, JSON.stringify(recipe), executionId]);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '23505') return false;
    throw error;
  }
}
