import type { PluginRecord } from '@keel/sdk/client';
import { ErrorNote } from '../ui.tsx';
import { ExperimentalSwitch, settingLabel, useExperimentalSettings } from './experimental-settings.tsx';

/**
 * A plugin whose routes need an experimental instance setting on (`requiresExperimentalSettings`
 * in its manifest) says so on its card: which setting, whether it is on, and a switch that turns
 * it on (the same setting as on the instance page).
 */
export function PluginRequirements({ plugin }: { plugin: Pick<PluginRecord, 'pluginKey' | 'displayName' | 'requiresExperimentalSettings'> }) {
  const settings = useExperimentalSettings();
  const required = plugin.requiresExperimentalSettings ?? [];
  if (required.length === 0) return null;
  const off = required.filter((name) => settings.data?.[name] !== true);
  return (
    <div className={off.length ? 'notice warn' : 'notice'} role="group" aria-label={`Instance settings ${plugin.displayName} needs`}>
      <p>
        {off.length
          ? `${plugin.displayName} answers 404 on its routes until ${off.map(settingLabel).join(' and ')} ${off.length > 1 ? 'are' : 'is'} turned on for the instance.`
          : `${plugin.displayName} needs ${required.map(settingLabel).join(' and ')}, which ${required.length > 1 ? 'are' : 'is'} on.`}
      </p>
      <ErrorNote error={settings.error} />
      {settings.data ? required.map((name) => <ExperimentalSwitch key={name} name={name} value={settings.data![name] === true} onChanged={settings.reload} />) : null}
    </div>
  );
}
