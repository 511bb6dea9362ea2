import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.tsx';
import { applyColourScheme } from './theme.tsx';
import './styles.css';

applyColourScheme();
createRoot(document.getElementById('root')!).render(<StrictMode><App /></StrictMode>);
