/**
 * The console's one icon set: line icons on a 24-unit grid drawn in the text's colour
 * (`currentColor`), inline so they need no font, no request and no third party. Icons are
 * decoration: the text beside them says the same, so they are hidden from screen readers.
 */
const PATHS = {
  menu: 'M4 6h16M4 12h16M4 18h16',
  close: 'M6 6l12 12M18 6L6 18',
  sun: 'M12 8a4 4 0 1 0 0 8a4 4 0 1 0 0-8zM12 2v2M12 20v2M4.9 4.9l1.4 1.4M17.7 17.7l1.4 1.4M2 12h2M20 12h2M4.9 19.1l1.4-1.4M17.7 6.3l1.4-1.4',
  moon: 'M20 14.5A8 8 0 0 1 9.5 4a8 8 0 1 0 10.5 10.5z',
  companies: 'M4 21V5l8-3v19M12 8h8v13M4 21h17M7.5 8h1M7.5 12h1M7.5 16h1M15.5 12h1M15.5 16h1',
  dashboard: 'M4 4h7v9H4zM13 4h7v5h-7zM13 11h7v9h-7zM4 15h7v5H4z',
  inbox: 'M3 13l3-8h12l3 8v6H3zM3 13h5l1 3h6l1-3h5',
  agents: 'M9 11a3.5 3.5 0 1 0 0-7a3.5 3.5 0 0 0 0 7zM2.5 20a6.5 6.5 0 0 1 13 0M16 4.5a3.5 3.5 0 0 1 0 6.5M18.5 14a6.5 6.5 0 0 1 3 6',
  issues: 'M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18zM12 11a1 1 0 1 0 0 2a1 1 0 1 0 0-2z',
  projects: 'M3 6a1 1 0 0 1 1-1h5l2 2h9a1 1 0 0 1 1 1v10a1 1 0 0 1-1 1H4a1 1 0 0 1-1-1z',
  goals: 'M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18zM12 7.5a4.5 4.5 0 1 0 0 9a4.5 4.5 0 1 0 0-9zM12 11.5v1',
  runs: 'M7 4.5v15l12-7.5z',
  approvals: 'M4 12.5l5 5L20 6.5',
  costs: 'M12 2v20M17 6.5c-1-1.3-2.8-2-5-2c-2.8 0-4.5 1.4-4.5 3.3c0 4.5 9.5 2.4 9.5 7.2c0 2-1.9 3.5-5 3.5c-2.3 0-4.2-.8-5.2-2.3',
  secrets: 'M8 15a4 4 0 1 0 0-8a4 4 0 0 0 0 8zM12 11h9M17 11v3M20 11v2',
  'model-providers': 'M7 7h10v10H7zM10 2v5M14 2v5M10 17v5M14 17v5M2 10h5M2 14h5M17 10h5M17 14h5',
  skills: 'M4 5a2 2 0 0 1 2-2h13v16H6a2 2 0 0 0-2 2zM4 21a2 2 0 0 1 2-2h13v2H6M8 7h7',
  activity: 'M3 12h4l3-7l4 14l3-7h4',
  workspaces: 'M3 7l9-4l9 4v10l-9 4l-9-4zM3 7l9 4l9-4M12 11v10',
  feedback: 'M4 5h16v11H9l-5 4z',
  members: 'M12 12a4 4 0 1 0 0-8a4 4 0 0 0 0 8zM4 21a8 8 0 0 1 16 0',
  settings: 'M4 7h10M18 7h2M4 17h2M10 17h10M16 5v4M8 15v4',
  plugins: 'M9 3h6v4h-6zM6 7h12v6a6 6 0 0 1-12 0zM12 19v2',
  instance: 'M4 4h16v6H4zM4 14h16v6H4zM7.5 7h.01M7.5 17h.01',
  pages: 'M6 3h9l4 4v14H6zM15 3v4h4',
  empty: 'M4 14l2.5-8h11l2.5 8v5H4zM4 14h5l1 2h4l1-2h5',
} as const;

export type IconName = keyof typeof PATHS;

export function Icon({ name, className }: { name: IconName; className?: string }) {
  return (
    <svg className={className ? `icon ${className}` : 'icon'} viewBox="0 0 24 24" width="1em" height="1em" aria-hidden="true" focusable="false"
      fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round" strokeLinejoin="round">
      <path d={PATHS[name]} />
    </svg>
  );
}

/** The menu's icon for a section of a company (`dashboard`, `inbox`, …); plugin pages share one. */
export function sectionIcon(section: string): IconName {
  return section in PATHS ? (section as IconName) : 'pages';
}
