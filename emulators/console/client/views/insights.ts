// Live insights of the meeting: talking points (TalkingPointEvent) and its tasks (refetched on
// EntityChanged for tasks).
import type { Task, TalkingPoint } from '../types';
import { fill, h } from './dom';

export class InsightsPane {
  readonly el: HTMLElement;
  private readonly points = h('ul', { id: 'talking-points', class: 'plain' });
  private readonly tasks = h('ul', { id: 'tasks', class: 'plain' });
  private talkingPoints = new Map<string, TalkingPoint>();

  constructor() {
    this.el = h('section', { class: 'card' }, h('h3', {}, 'Talking points'), this.points, h('h3', {}, 'Tasks'), this.tasks);
    this.setTalkingPoints([]);
    this.setTasks([]);
  }

  setTalkingPoints(items: TalkingPoint[]) {
    this.talkingPoints = new Map(items.map((p) => [p.id, p]));
    this.renderPoints();
  }

  addTalkingPoint(p: TalkingPoint) {
    this.talkingPoints.set(p.id, p);
    this.renderPoints();
  }

  setTasks(items: Task[]) {
    if (!items.length) return fill(this.tasks, h('li', { class: 'muted' }, 'No tasks yet.'));
    fill(this.tasks, ...items.map((t) => h('li', { class: 'task' }, h('span', { class: `badge ${t.status}` }, t.status), ' ', t.content, h('span', { class: 'muted' }, ` (${t.source})`))));
  }

  private renderPoints() {
    const items = [...this.talkingPoints.values()].sort((a, b) => a.created_at.localeCompare(b.created_at));
    if (!items.length) return fill(this.points, h('li', { class: 'muted' }, 'No talking points yet.'));
    fill(this.points, ...items.map((p) => h('li', { class: 'talking-point' }, p.content, p.is_final ? '' : h('span', { class: 'muted' }, ' (draft)'))));
  }
}
