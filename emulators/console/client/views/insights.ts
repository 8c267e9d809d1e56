// Live insights of the meeting: talking points (TalkingPointEvent) and its tasks (refetched on
// EntityChanged for tasks). While this tab records and no task exists, the tasks list says when
// they come (the ML service proposes them every ML_TASK_CADENCE_SEGMENTS final segments), so an
// empty list early in a take does not look broken.
import type { Task, TalkingPoint } from '../types';
import { fill, h } from './dom';

export class InsightsPane {
  readonly el: HTMLElement;
  private readonly points = h('ol', { id: 'talking-points', class: 'plain' });
  private readonly tasks = h('ul', { id: 'tasks', class: 'plain' });
  private talkingPoints = new Map<string, TalkingPoint>();
  private taskItems: Task[] = [];
  private recording = false;

  constructor(private readonly taskCadenceSegments: number) {
    this.el = h(
      'section',
      { class: 'card' },
      h('h3', {}, 'Talking points'),
      this.points,
      h('h3', {}, 'Tasks'),
      this.tasks,
    );
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

  /** Whether this tab is recording the meeting (the empty list then says when tasks arrive). */
  setRecording(recording: boolean) {
    if (recording === this.recording) return;
    this.recording = recording;
    this.setTasks(this.taskItems);
  }

  setTasks(items: Task[]) {
    this.taskItems = items;
    if (!items.length && this.recording) {
      const n = this.taskCadenceSegments;
      return fill(
        this.tasks,
        h(
          'li',
          { id: 'tasks-hint', class: 'muted' },
          `No tasks yet: they arrive after every ${n} final transcript segment${n === 1 ? '' : 's'} of the recording.`,
        ),
      );
    }
    if (!items.length) return fill(this.tasks, h('li', { class: 'muted' }, 'No tasks yet.'));
    fill(
      this.tasks,
      ...items.map((t) =>
        h(
          'li',
          { class: 'task' },
          h('span', { class: `badge ${t.status}` }, t.status),
          ' ',
          t.content,
          h('span', { class: 'muted' }, ` (${t.source})`),
        ),
      ),
    );
  }

  private renderPoints() {
    const items = [...this.talkingPoints.values()].sort((a, b) => a.created_at.localeCompare(b.created_at));
    if (!items.length) return fill(this.points, h('li', { class: 'muted' }, 'No talking points yet.'));
    fill(
      this.points,
      // Numbered from 1 in the order they came.
      ...items.map((p, i) =>
        h(
          'li',
          { class: 'talking-point', 'data-id': p.id },
          h('span', { class: 'tp-number' }, `${i + 1}.`),
          ' ',
          p.content,
          p.is_final ? '' : h('span', { class: 'muted' }, ' (draft)'),
        ),
      ),
    );
  }
}
