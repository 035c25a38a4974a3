#!/usr/bin/env perl
# Runs a command, or an array of JOB=1:N commands, as local processes, each writing
# its own log (command, start time, output, end time and exit code).
#
#   utils/run.pl [--max-jobs-run K] [JOB=1:N] LOGFILE command args...
#
# --mem, --num-threads, --gpu, --time and --config are accepted for compatibility with
# utils/slurm.pl and ignored here.  With --max-jobs-run K at most K jobs run at once
# (default: all N).  Exits 0 when every job succeeded; otherwise prints how many
# failed and the first failing log, and exits 1.  Ctrl-C stops all running jobs.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use POSIX qw(:sys_wait_h setpgid);
use PunctJobs;

my $prog = "run.pl";
my $parsed = eval { PunctJobs::parse_command_line($prog, @ARGV) };
if ($@) { print STDERR $@; exit 1; }

my ($first, $last) = ($parsed->{first}, $parsed->{last});
my $total = $last - $first + 1;
my $max_running = $parsed->{options}{max_jobs_run} // $total;

my %running;        # pid => job id
my %exit_codes;     # job id => code

sub log_for { return PunctJobs::substitute_job($parsed->{logfile}, $parsed->{jobvar}, $_[0]); }

sub run_one_job {
  my ($jobid) = @_;
  my $logfile = log_for($jobid);
  PunctJobs::make_parent_dir($logfile);
  my $command = PunctJobs::command_for_job($parsed, $jobid);
  open(my $log, ">", $logfile) or die "$prog: cannot write log $logfile: $!\n";
  print $log PunctJobs::log_header($command);
  close $log;
  my $start = time();
  my $status = system("bash", "-o", "pipefail", "-c", "( $command ) >>" . PunctJobs::shell_quote($logfile) . " 2>&1");
  my $code = $status == -1 ? 127 : ($status & 127) ? 128 + ($status & 127) : $status >> 8;
  open($log, ">>", $logfile) or die "$prog: cannot append to log $logfile: $!\n";
  print $log PunctJobs::log_footer($code, time() - $start);
  close $log;
  return $code;
}

sub stop_all {
  my ($signal) = @_;
  for my $pid (keys %running) { kill("TERM", -$pid); }
  print STDERR "$prog: interrupted by SIG$signal, stopped " . scalar(keys %running) . " running job(s)\n";
  exit 130;
}
$SIG{INT} = sub { stop_all("INT") };
$SIG{TERM} = sub { stop_all("TERM") };

sub reap_one {
  my $pid = waitpid(-1, 0);
  return if $pid <= 0 || !exists $running{$pid};
  my $jobid = delete $running{$pid};
  $exit_codes{$jobid} = ($? & 127) ? 128 + ($? & 127) : $? >> 8;
}

for my $jobid ($first .. $last) {
  reap_one() while scalar(keys %running) >= $max_running;
  my $pid = fork();
  die "$prog: fork failed: $!\n" unless defined $pid;
  if ($pid == 0) {
    setpgid(0, 0);                 # own process group, so Ctrl-C handling can stop the whole job
    $SIG{INT} = $SIG{TERM} = 'DEFAULT';
    exit(run_one_job($jobid) == 0 ? 0 : 1);
  }
  $running{$pid} = $jobid;
}
reap_one() while %running;

my @failed = grep { $exit_codes{$_} != 0 } sort { $a <=> $b } keys %exit_codes;
if (@failed) {
  my $code = PunctJobs::exit_code_in_log(log_for($failed[0]));
  print STDERR PunctJobs::failure_message($prog, scalar(@failed), $total, log_for($failed[0]),
    defined $code ? "exit code $code" : "no exit code in log");
  exit 1;
}
exit 0;
