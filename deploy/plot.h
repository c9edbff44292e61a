/* plot.h — `seedctl plot RUN [RUN...] [-o FILE.png]`: learning curves of runs as one PNG.
 *
 * Contract: reads RUN/metrics.jsonl of each run (one JSON object per line, as the learner
 * writes it) and draws, every run overlaid in its own colour, the success rate against
 * env steps (left) and against wall-clock minutes since the run's first record (right):
 * the training success (the mean of the rolling "success/ENV/FAMILY" values of a record)
 * as a line, the periodic evaluation ("eval_success", when a record has it) as points
 * joined by a dashed line, and the evaluation on the training pool ("eval_pool_success",
 * runs whose env has envs.N.tasks) as points joined by a dotted line. Each run has its own
 * colour (16 distinct, the most one plot takes), the legend names the runs, and the title
 * says which style is which; run names are drawn literally. Rendering is gnuplot's
 * pngcairo terminal (Debian's gnuplot-nox: a plotting program any machine has, no Python at run
 * time). Lines that are not JSON objects are skipped and counted on stderr; a run without a
 * readable metrics.jsonl or without a single usable record is an error naming it. */
#ifndef SEED_DEPLOY_PLOT_H
#define SEED_DEPLOY_PLOT_H

/* argv after "plot"; returns the process exit code (0, 1 error, 2 usage). */
int seedctl_plot(int argc, char **argv);

#endif
