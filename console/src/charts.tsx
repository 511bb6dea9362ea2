/**
 * Small charts in plain SVG: a few columns per day need no chart library. Each chart carries its
 * numbers as text too (the figure's label and a legend with totals), for screen readers and for
 * colours that are hard to tell apart.
 */

/** `tone` picks the series' colour (chart-s0 … chart-s6), its position when absent. */
export interface Series { key: string; label: string; values: number[]; tone?: number }

const WIDTH = 420;
const HEIGHT = 150;
const PLOT = 120;

/** `2026-11-29` as `11/29`. */
export function shortDate(date: string): string {
  const [, month, day] = date.split('-');
  return `${Number(month)}/${Number(day)}`;
}

function Axis({ dates, column }: { dates: string[]; column: number }) {
  // Every other day keeps the labels apart at 390 px; the last day (today) is always named.
  return <>{dates.map((date, index) => (index % 2 === (dates.length - 1) % 2
    ? <text key={date} x={index === dates.length - 1 ? WIDTH : index * column + column / 2} y={HEIGHT - 4} textAnchor={index === dates.length - 1 ? 'end' : 'middle'} className="chart-axis">{shortDate(date)}</text>
    : null))}</>;
}

/** Columns per day, the series stacked in order; `format` writes a value for people. */
export function StackedColumns({ title, dates, series, format = String, empty }: { title: string; dates: string[]; series: Series[]; format?: (value: number) => string; empty: string }) {
  const totals = dates.map((_, index) => series.reduce((sum, s) => sum + (s.values[index] ?? 0), 0));
  const max = Math.max(...totals, 0);
  const column = WIDTH / Math.max(1, dates.length);
  const sums = series.map((s) => s.values.reduce((sum, v) => sum + v, 0));
  const described = dates.map((date, index) => `${shortDate(date)}: ${series.filter((s) => s.values[index]).map((s) => `${s.label} ${format(s.values[index]!)}`).join(', ') || 'none'}`).join('; ');
  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      {max === 0 ? <p className="muted">{empty}</p> : (
        <svg role="img" aria-label={`${title}. ${described}`} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} width="100%">
          {dates.map((date, index) => {
            let top = PLOT;
            return (
              <g key={date}>
                {series.map((s, position) => {
                  const value = s.values[index] ?? 0;
                  if (!value) return null;
                  const height = (value / max) * (PLOT - 10);
                  top -= height;
                  return <rect key={s.key} x={index * column + 2} y={top} width={column - 4} height={height} className={`chart-s${s.tone ?? position}`}><title>{`${shortDate(date)} ${s.label}: ${format(value)}`}</title></rect>;
                })}
              </g>
            );
          })}
          <line x1="0" x2={WIDTH} y1={PLOT} y2={PLOT} className="chart-base" />
          <Axis dates={dates} column={column} />
        </svg>
      )}
      <ul className="legend" aria-label={`${title}: totals`}>
        {series.map((s, position) => <li key={s.key}><span className={`swatch chart-s${s.tone ?? position}`} aria-hidden="true" /> {s.label} <strong>{format(sums[position]!)}</strong></li>)}
      </ul>
    </figure>
  );
}

/** A share per day (0 to 1, null where there was nothing to measure), as a line over columns of 100 %. */
export function RateLine({ title, dates, rates, overall }: { title: string; dates: string[]; rates: Array<number | null>; overall: number | null }) {
  const column = WIDTH / Math.max(1, dates.length);
  const points = rates.map((rate, index) => (rate === null ? null : [index * column + column / 2, PLOT - rate * (PLOT - 10)] as const));
  const percent = (rate: number | null) => (rate === null ? 'no runs' : `${Math.round(rate * 100)}%`);
  const path = points.reduce((d, point, index) => {
    if (!point) return d;
    const joined = index > 0 && points[index - 1];
    return `${d}${joined ? ' L' : ' M'}${point[0].toFixed(1)} ${point[1].toFixed(1)}`;
  }, '');
  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      {points.every((point) => point === null) ? <p className="muted">No finished runs in these days.</p> : (
        <svg role="img" aria-label={`${title}. ${dates.map((date, index) => `${shortDate(date)}: ${percent(rates[index]!)}`).join('; ')}`} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} width="100%">
          <line x1="0" x2={WIDTH} y1={10} y2={10} className="chart-grid" />
          <line x1="0" x2={WIDTH} y1={PLOT} y2={PLOT} className="chart-base" />
          <path d={path} className="chart-line" />
          {points.map((point, index) => (point ? <circle key={dates[index]} cx={point[0]} cy={point[1]} r="3.5" className="chart-dot"><title>{`${shortDate(dates[index]!)}: ${percent(rates[index]!)}`}</title></circle> : null))}
          <Axis dates={dates} column={column} />
        </svg>
      )}
      <p className="legend" data-testid="success-rate">{overall === null
        ? `No run finished in the ${dates.length} days.`
        : <>Over the {dates.length} days, <strong>{percent(overall)}</strong> of finished runs succeeded (cancelled runs count for neither side).</>}</p>
    </figure>
  );
}
