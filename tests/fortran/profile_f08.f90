! Profiling under `use mpi_f08` (MPI-4.0 15.2, 19.1.5): the program defines
! the specific procedures MPI_Send_f08, MPI_Send_c_f08 (large count) and
! MPI_Comm_rank_f08, which count their calls and call the PMPI_Send and
! PMPI_Comm_rank generics. A call of the generic MPI_Send with a default
! INTEGER count reaches MPI_Send_f08, one with an
! INTEGER(KIND=MPI_COUNT_KIND) count MPI_Send_c_f08; the counts and the
! data moved are checked on every rank.
! Prints PASS profile_f08.

module prof_counts
  implicit none
  integer :: nsend = 0, nsend_c = 0, nrank = 0, items = 0
end module prof_counts

subroutine MPI_Send_f08(buf, count, datatype, dest, tag, comm, ierror)
  use mpi_f08, only: MPI_Datatype, MPI_Comm, PMPI_Send
  use prof_counts
  implicit none
  !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
  type(*), dimension(*), asynchronous :: buf
  integer :: count, dest, tag
  type(MPI_Datatype) :: datatype
  type(MPI_Comm) :: comm
  integer, optional :: ierror
  nsend = nsend + 1
  items = items + count
  call PMPI_Send(buf, count, datatype, dest, tag, comm, ierror)
end subroutine MPI_Send_f08

subroutine MPI_Send_c_f08(buf, count, datatype, dest, tag, comm, ierror)
  use mpi_f08, only: MPI_Datatype, MPI_Comm, MPI_COUNT_KIND, PMPI_Send
  use prof_counts
  implicit none
  !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
  type(*), dimension(*), asynchronous :: buf
  integer(kind=MPI_COUNT_KIND) :: count
  integer :: dest, tag
  type(MPI_Datatype) :: datatype
  type(MPI_Comm) :: comm
  integer, optional :: ierror
  nsend_c = nsend_c + 1
  items = items + int(count)
  call PMPI_Send(buf, count, datatype, dest, tag, comm, ierror)
end subroutine MPI_Send_c_f08

subroutine MPI_Comm_rank_f08(comm, rank, ierror)
  use mpi_f08, only: MPI_Comm, PMPI_Comm_rank
  use prof_counts
  implicit none
  type(MPI_Comm) :: comm
  integer :: rank
  integer, optional :: ierror
  nrank = nrank + 1
  call PMPI_Comm_rank(comm, rank, ierror)
end subroutine MPI_Comm_rank_f08

program profile_f08
  use mpi_f08
  use prof_counts
  implicit none
  integer :: rank, np, errs, total, i, k, ierr
  integer :: buf(6)
  integer(kind=MPI_COUNT_KIND) :: n6
  type(MPI_Status) :: st

  errs = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_rank(MPI_COMM_WORLD, i, ierr)
  if (i /= rank .or. ierr /= MPI_SUCCESS .or. nrank /= 2) errs = errs + 1
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  n6 = 6
  if (rank == 0) then
    do i = 1, np - 1
      buf = [(i * 10 + k, k = 1, 6)]
      call MPI_Send(buf, 6, MPI_INTEGER, i, 1, MPI_COMM_WORLD)
      buf = -buf
      call MPI_Send(buf, n6, MPI_INTEGER, i, 2, MPI_COMM_WORLD, ierr)
      if (ierr /= MPI_SUCCESS) errs = errs + 1
    end do
    if (nsend /= np - 1 .or. nsend_c /= np - 1 .or. items /= 12 * (np - 1)) errs = errs + 1
  else
    call MPI_Recv(buf, 6, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, st)
    if (any(buf /= [(rank * 10 + k, k = 1, 6)]) .or. st%MPI_TAG /= 1) errs = errs + 1
    call MPI_Recv(buf, n6, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, st)
    if (any(buf /= [(-(rank * 10 + k), k = 1, 6)]) .or. st%MPI_TAG /= 2) errs = errs + 1
    if (nsend /= 0 .or. nsend_c /= 0) errs = errs + 1
  end if
  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0 .and. total == 0) print '(a)', 'PASS profile_f08'
  if (rank == 0 .and. total /= 0) print '(a,i0)', 'FAIL profile_f08: errors ', total
  call MPI_Finalize()
end program profile_f08
