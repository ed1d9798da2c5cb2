import { render } from 'preact';
import { App } from './app.js';
import { takeLinkToken } from './portal.js';
import './style.css';

render(<App linkToken={takeLinkToken()} />, document.getElementById('app')!);
